package platform

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// FunctionCalls is how many RunFunction calls our function has answered, as
// its own gRPC server metrics count them (grpc_server_handled_total, every
// code).
func (p *Platform) FunctionCalls(ctx context.Context) (int64, error) {
	_, ip, err := p.PackagePod(ctx, "Function", FunctionName)
	if err != nil {
		return 0, err
	}
	// The function serves its metrics on :8080 in its pod (its
	// --metrics-address default); the host reaches the pod through a
	// forwarder into the node.
	p.mu.Lock()
	fwd, ok := p.forwards[ip]
	if !ok {
		if fwd, err = p.Node.Forward("127.0.0.1:0", ip+":8080"); err != nil {
			p.mu.Unlock()
			return 0, err
		}
		if p.forwards == nil {
			p.forwards = map[string]string{}
		}
		p.forwards[ip] = fwd
	}
	p.mu.Unlock()
	url := "http://" + fwd + "/metrics"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer rsp.Body.Close() //nolint:errcheck // read-only
	if rsp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, rsp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rsp.Body)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	var n int64
	for _, m := range families["grpc_server_handled_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "grpc_method" && l.GetValue() == "RunFunction" {
				n += int64(m.GetCounter().GetValue())
			}
		}
	}
	return n, nil
}
