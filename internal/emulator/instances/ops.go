package instances

import (
	"net/http"
	"strconv"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// An operation is a zonal compute operation.
type operation struct {
	ID                  uint64
	Project, Zone, Name string
	Type                string // insert, delete, setLabels, stop, start
	TargetLink          string
	TargetID            uint64
	User                string
	Inserted, Done      time.Time
}

func (o *operation) path() string {
	return "projects/" + o.Project + "/zones/" + o.Zone + "/operations/" + o.Name
}

// newOp records the operation of a write on i. a.mu must be held.
func (a *API) newOp(i *instance, typ string) *operation {
	now := a.host.Now()
	op := &operation{ID: a.host.Gen().ID(), Project: i.Project, Zone: i.Zone, Name: a.host.Gen().OpName(now),
		Type: typ, TargetLink: core.ComputeRoot + i.path(), TargetID: i.ID, User: a.host.User(),
		Inserted: now, Done: now.Add(a.host.OpLatency())}
	if len(a.ops) >= core.MaxOps {
		a.ops = map[string]*operation{}
	}
	a.ops[op.path()] = op
	return op
}

// render shows the operation as of now; running forces RUNNING, which is
// what the write itself answers.
func (o *operation) render(now time.Time, running bool) map[string]any {
	m := map[string]any{
		"kind":          "compute#operation",
		"id":            strconv.FormatUint(o.ID, 10),
		"name":          o.Name,
		"zone":          core.ComputeRoot + "projects/" + o.Project + "/zones/" + o.Zone,
		"operationType": o.Type,
		"selfLink":      core.ComputeRoot + o.path(),
		"targetLink":    o.TargetLink,
		"targetId":      strconv.FormatUint(o.TargetID, 10),
		"user":          o.User,
		"insertTime":    o.Inserted.Format(time.RFC3339Nano),
		"startTime":     o.Inserted.Format(time.RFC3339Nano),
		"status":        "RUNNING",
		"progress":      0,
	}
	if running || now.Before(o.Done) {
		return m
	}
	m["status"], m["progress"], m["endTime"] = "DONE", 100, o.Done.Format(time.RFC3339Nano)
	return m
}

// answer answers a write: its operation, RUNNING.
func (a *API) answer(w http.ResponseWriter, method string, op *operation) {
	a.host.Mutated("%s %s operation=%s", method, op.TargetLink, op.Name)
	core.WriteJSON(w, http.StatusOK, op.render(a.host.Now(), true))
}

func (a *API) operation(r *http.Request) (*operation, error) {
	if err := zoneOf(r); err != nil {
		return nil, err
	}
	p := "projects/" + r.PathValue("project") + "/zones/" + r.PathValue("zone") + "/operations/" + r.PathValue("operation")
	a.mu.Lock()
	defer a.mu.Unlock()
	op, ok := a.ops[p]
	if !ok {
		return nil, core.ErrNotFound(p)
	}
	return op, nil
}

func (a *API) getOp(w http.ResponseWriter, r *http.Request) {
	op, err := a.operation(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, op.render(a.host.Now(), false))
}

// waitOp answers when the operation is done, or after at most two minutes
// (compute's wait deadline) or when the caller gives up, as it stands.
func (a *API) waitOp(w http.ResponseWriter, r *http.Request) {
	op, err := a.operation(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if d := op.Done.Sub(a.host.Now()); d > 0 {
		t := time.NewTimer(min(d, 2*time.Minute))
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	core.WriteJSON(w, http.StatusOK, op.render(a.host.Now(), false))
}
