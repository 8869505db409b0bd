package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// maxAdminBody bounds a request body: the admin API takes small JSON objects.
const maxAdminBody = 1 << 20

// admin serves the admin HTTP API described in the package documentation.
type admin struct {
	cloud *Cloud
	calls *callCounter
	mux   *http.ServeMux
}

func newAdmin(c *Cloud, calls *callCounter) http.Handler {
	a := &admin{cloud: c, calls: calls, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /vms", a.listVMs)
	a.mux.HandleFunc("GET /vms/{id}", a.getVM)
	a.mux.HandleFunc("DELETE /vms/{id}", a.deleteVM)
	a.mux.HandleFunc("POST /vms/{id}/kill", a.killVM)
	a.mux.HandleFunc("POST /vms/{id}/announce", a.announce)
	a.mux.HandleFunc("GET /history", a.history)
	a.mux.HandleFunc("GET /calls", a.callStats)
	a.mux.HandleFunc("POST /nodes/{name}/not-ready", a.nodeReady(false))
	a.mux.HandleFunc("POST /nodes/{name}/ready", a.nodeReady(true))
	a.mux.HandleFunc("POST /orphans", a.createOrphan)
	a.mux.HandleFunc("GET /outage", a.getOutage)
	a.mux.HandleFunc("POST /outage", a.setOutage)
	a.mux.HandleFunc("GET /zones/out-of-capacity", a.listFullZones)
	a.mux.HandleFunc("POST /zones/{zone}/out-of-capacity", a.zoneCapacity(true))
	a.mux.HandleFunc("POST /zones/{zone}/capacity", a.zoneCapacity(false))
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s; see the sim package documentation", r.Method, r.URL.Path))
	})
	return a.mux
}

// Outage is the body of GET and POST /outage.
type Outage struct {
	Outage bool `json:"outage"`
}

func (a *admin) listVMs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []VM{}
	for _, vm := range a.cloud.VMs() {
		if match(q.Get("namespace"), vm.Namespace) && match(q.Get("class"), vm.ClassName) && match(q.Get("machine"), vm.MachineName) {
			out = append(out, vm)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *admin) getVM(w http.ResponseWriter, r *http.Request) {
	vm, ok := a.cloud.VM(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no VM %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, vm)
}

func (a *admin) deleteVM(w http.ResponseWriter, r *http.Request) {
	h, err := a.cloud.DeleteVM(r.PathValue("id"))
	if err != nil {
		writeDriverError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (a *admin) killVM(w http.ResponseWriter, r *http.Request) {
	vm, err := a.cloud.KillVM(r.PathValue("id"))
	if err != nil {
		writeDriverError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, vm)
}

// Announcement is the body of POST /vms/{id}/announce.
type Announcement struct {
	// Kind is a driver.VMEventKind: Interruption or RebalanceRecommendation.
	Kind driver.VMEventKind `json:"kind"`
	// Notice is how long before the VM is taken away ("2m"); empty: no deadline.
	Notice string `json:"notice,omitempty"`
}

func (a *admin) announce(w http.ResponseWriter, r *http.Request) {
	var req Announcement
	if !readJSON(w, r, &req) {
		return
	}
	if req.Kind != driver.VMInterruption && req.Kind != driver.VMRebalanceRecommendation {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("kind %q: want %s or %s", req.Kind, driver.VMInterruption, driver.VMRebalanceRecommendation))
		return
	}
	var notice time.Duration
	if req.Notice != "" {
		d, err := time.ParseDuration(req.Notice)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("notice %q: want a duration such as 2m", req.Notice))
			return
		}
		notice = d
	}
	ev, err := a.cloud.Announce(r.PathValue("id"), req.Kind, notice)
	if err != nil {
		writeDriverError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

func (a *admin) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []HistoryEntry{}
	for _, h := range a.cloud.History() {
		if match(q.Get("namespace"), h.Namespace) && match(q.Get("class"), h.ClassName) && match(q.Get("machine"), h.MachineName) {
			out = append(out, h)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *admin) nodeReady(ready bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vm, err := a.cloud.SetNodeReady(r.PathValue("name"), ready)
		if err != nil {
			writeDriverError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, vm)
	}
}

func (a *admin) createOrphan(w http.ResponseWriter, r *http.Request) {
	var req OrphanRequest
	if !readJSON(w, r, &req) {
		return
	}
	vm, err := a.cloud.CreateOrphan(req)
	if err != nil {
		writeDriverError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, vm)
}

func (a *admin) getOutage(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Outage{Outage: a.cloud.Outage()})
}

func (a *admin) setOutage(w http.ResponseWriter, r *http.Request) {
	var o Outage
	if on := r.URL.Query().Get("on"); on != "" {
		v, err := strconv.ParseBool(on)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("on=%q: want true or false", on))
			return
		}
		o.Outage = v
	} else if !readJSON(w, r, &o) {
		return
	}
	a.cloud.SetOutage(o.Outage)
	writeJSON(w, http.StatusOK, o)
}

// ZonesOutOfCapacity is the body of GET /zones/out-of-capacity and of the
// answers to POST /zones/{zone}/...: the zones made out of capacity.
type ZonesOutOfCapacity struct {
	Zones []string `json:"zones"`
}

func (a *admin) listFullZones(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ZonesOutOfCapacity{Zones: a.cloud.OutOfCapacityZones()})
}

func (a *admin) zoneCapacity(full bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.cloud.SetZoneCapacity(r.PathValue("zone"), full)
		writeJSON(w, http.StatusOK, ZonesOutOfCapacity{Zones: a.cloud.OutOfCapacityZones()})
	}
}

func match(filter, value string) bool { return filter == "" || filter == value }

// readJSON decodes a request body strictly, answering 400 when it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+strings.TrimPrefix(err.Error(), "json: "))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// AdminError is the body of every admin error response.
type AdminError struct {
	Error string `json:"error"`
	// Code is the machine error code behind the error, when there is one.
	Code string `json:"code,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, AdminError{Error: msg})
}

func writeDriverError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	code := driver.CodeOf(err)
	switch code {
	case driver.NotFound:
		status = http.StatusNotFound
	case driver.InvalidArgument:
		status = http.StatusBadRequest
	case driver.AlreadyExists, driver.ResourceExhausted:
		status = http.StatusConflict
	}
	var de *driver.Error
	msg := err.Error()
	if errors.As(err, &de) {
		msg = de.Message
	}
	writeJSON(w, status, AdminError{Error: msg, Code: code.String()})
}
