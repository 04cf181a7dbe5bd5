package platform

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	var n int64
	sc := bufio.NewScanner(rsp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_handled_total{") || !strings.Contains(line, `grpc_method="RunFunction"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		n += int64(v)
	}
	return n, sc.Err()
}
