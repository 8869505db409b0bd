package machine

import (
	"context"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// hungDriver never answers GetPluginInfo until its caller gives up.
type hungDriver struct{ driver.Driver }

func (hungDriver) GetPluginInfo(ctx context.Context, _ *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A driver that does not answer GetPluginInfo holds a worker no longer than
// the driver call timeout, and cannot tell: the method is then tried.
func TestPluginInfoOfAHungDriverTimesOut(t *testing.T) {
	var p pluginInfos
	done := make(chan bool, 1)
	go func() {
		done <- p.lacks(context.Background(), "hung", hungDriver{}, driver.MethodUpdateMachine, time.Now(), 50*time.Millisecond)
	}()
	select {
	case lacks := <-done:
		if lacks {
			t.Fatal("a driver that never answered was taken to lack UpdateMachine")
		}
	case <-time.After(time.Minute):
		t.Fatal("GetPluginInfo of a hung driver held the reconcile beyond its call timeout")
	}
}
