package networksecurity

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

const (
	groupMessageType  = "type.googleapis.com/google.cloud.networksecurity.v1.AddressGroup"
	opMetadataType    = "type.googleapis.com/google.cloud.networksecurity.v1.OperationMetadata"
	emptyResponseType = "type.googleapis.com/google.protobuf.Empty"
)

// intEnums reports whether the caller asked for enums as numbers, as the
// Cloud Client Libraries' REST transport does ("$alt=json;enum-encoding=int";
// KCC networksecurityaddressgroup-minimal/-maximal recordings: GET answers
// "type": 1 and "purpose": [1]).
func intEnums(r *http.Request) bool {
	return strings.Contains(r.URL.Query().Get("$alt"), "enum-encoding=int")
}

func enumOut(v string, names []string, asInt bool) any {
	if i := slices.Index(names, v); asInt && i >= 0 {
		return i
	}
	return v
}

// renderGroup is an AddressGroup as GCP answers it: fields left empty are
// absent, and there is no selfLink, though the API has one (no recorded
// answer carries it).
func renderGroup(g *AddressGroup, asInt bool) map[string]any {
	m := map[string]any{
		"name":       g.path(),
		"createTime": protoTime(g.Created),
		"updateTime": protoTime(g.Updated),
		"type":       enumOut(g.Type, groupTypes, asInt),
		"capacity":   g.Capacity,
	}
	if g.Description != "" {
		m["description"] = g.Description
	}
	if len(g.Labels) > 0 {
		m["labels"] = g.Labels
	}
	if len(g.Items) > 0 {
		m["items"] = g.Items
	}
	if len(g.Purpose) > 0 {
		p := make([]any, len(g.Purpose))
		for i, v := range g.Purpose {
			p[i] = enumOut(v, groupPurposes, asInt)
		}
		m["purpose"] = p
	}
	return m
}

// renderGroupOp is the google.longrunning Operation as of now; running
// forces the not-done form the mutating call answers. As in the 2026 KCC
// recordings, false booleans (done, requestedCancellation) are left out;
// older recordings print them.
func renderGroupOp(op *groupOp, now time.Time, running, asInt bool) map[string]any {
	md := map[string]any{
		"@type":      opMetadataType,
		"createTime": protoTime(op.Created),
		"target":     op.Target,
		"verb":       op.Verb,
		"apiVersion": "v1",
	}
	m := map[string]any{"name": op.Name, "metadata": md}
	if running || now.Before(op.Done) {
		return m
	}
	m["done"] = true
	md["endTime"] = protoTime(op.Done)
	switch {
	case op.Err != nil:
		m["error"] = map[string]any{"code": core.RPCCodes[op.Err.Status], "message": op.Err.Message}
	case op.Result == nil:
		m["response"] = map[string]any{"@type": emptyResponseType}
	default:
		resp := renderGroup(op.Result, asInt)
		resp["@type"] = groupMessageType
		m["response"] = resp
	}
	return m
}

// protoTime formats a time the way proto3 JSON writes a Timestamp: UTC,
// with 0, 3, 6 or 9 fractional digits.
func protoTime(t time.Time) string {
	t = t.UTC()
	ns := t.Nanosecond()
	switch {
	case ns == 0:
		return t.Format("2006-01-02T15:04:05Z")
	case ns%1e6 == 0:
		return t.Format("2006-01-02T15:04:05.000Z")
	case ns%1e3 == 0:
		return t.Format("2006-01-02T15:04:05.000000Z")
	default:
		return t.Format("2006-01-02T15:04:05.000000000Z")
	}
}
