package main

import (
	"bytes"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette colours the MachineSets in the order they appear: the first
// set (the old template) blue, the second (the new one) orange, …
var palette = []color.RGBA{
	{0x3a, 0x5a, 0x8c, 0xff}, {0xe0, 0x7b, 0x00, 0xff}, {0x2e, 0x7d, 0x32, 0xff}, {0x8e, 0x24, 0xaa, 0xff},
}

// render draws each MachineSet's Machines (solid) and Running Machines
// (dashed) over time, and all sets' Machines together (grey), as SVG.
func render(sets []*set) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "Machines per MachineSet over time: a scale-up, then a rolling update"
	p.X.Label.Text = "seconds since the first Machine"
	p.Y.Label.Text = "Machines"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

	all := total(sets)
	t0 := all[0].seconds
	line := func(points []point, running bool, c color.Color, dashed bool, width vg.Length, name string) error {
		l, err := plotter.NewLine(steps(points, t0, running))
		if err != nil {
			return err
		}
		l.Color, l.Width = c, width
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	if err := line(all, false, color.Gray{Y: 0x99}, false, vg.Points(2.5), "all Machines"); err != nil {
		return nil, err
	}
	for i, s := range sets {
		c := palette[i%len(palette)]
		label := fmt.Sprintf("MachineSet %d (%s)", i+1, s.name)
		if err := line(s.points, false, c, false, vg.Points(1.5), label+": Machines"); err != nil {
			return nil, err
		}
		if err := line(s.points, true, c, true, vg.Points(1.5), label+": Running"); err != nil {
			return nil, err
		}
	}
	// Room above the lines for the legend.
	most := 0
	for _, pt := range all {
		most = max(most, pt.machines)
	}
	p.Y.Min, p.Y.Max = 0, float64(most)*1.5

	canvas := vgsvg.New(9*vg.Inch, 4.5*vg.Inch)
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// steps turns changes into a step function: a value holds until the next
// change.
func steps(points []point, t0 float64, running bool) plotter.XYs {
	var xys plotter.XYs
	for i, p := range points {
		v := float64(p.machines)
		if running {
			v = float64(p.running)
		}
		if i > 0 {
			xys = append(xys, plotter.XY{X: p.seconds - t0, Y: xys[len(xys)-1].Y})
		}
		xys = append(xys, plotter.XY{X: p.seconds - t0, Y: v})
	}
	return xys
}
