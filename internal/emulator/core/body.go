package core

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ReadBody reads the request body, refusing bodies larger than max.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, ErrPayload(fmt.Sprintf("Request payload size exceeds the limit: %d bytes.", max))
	}
	if err != nil {
		return nil, ErrParse("Cannot read request body.")
	}
	return b, nil
}
