package emulator

import (
	"strconv"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// renderOp shows the operation as of now; running forces RUNNING, which is
// what the mutating call itself always answers.
func renderOp(op *operation, now time.Time, running bool) map[string]any {
	m := map[string]any{
		"kind":          "compute#operation",
		"id":            strconv.FormatUint(op.ID, 10),
		"name":          op.Name,
		"operationType": op.Type,
		"selfLink":      apiRoot + op.path(),
		"targetLink":    op.TargetLink,
		"targetId":      strconv.FormatUint(op.TargetID, 10),
		"user":          op.User,
		"insertTime":    core.Timestamp(op.Inserted),
		"startTime":     core.Timestamp(op.Inserted),
		"status":        "RUNNING",
		"progress":      0,
	}
	if op.Scope.Region != "" {
		m["region"] = op.Scope.RegionURL()
	}
	if running || !op.done(now) {
		return m
	}
	m["status"], m["progress"], m["endTime"] = "DONE", 100, core.Timestamp(op.Done)
	if e := op.Err; e != nil {
		m["error"] = map[string]any{"errors": []any{map[string]any{"code": e.Code, "message": e.Message}}}
		m["httpErrorStatusCode"] = e.HTTPStatus
		m["httpErrorMessage"] = e.HTTPMessage
	}
	return m
}
