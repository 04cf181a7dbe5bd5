package platform

import (
	"context"
	"errors"
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
	p.mu.Lock()
	url := p.functionMetrics
	p.mu.Unlock()
	if url == "" {
		return 0, errors.New("the function is not running yet")
	}
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
