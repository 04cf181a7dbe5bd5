package core

// MaxOps bounds how many finished operations are remembered, so that long
// benchmark and chaos runs do not grow without limit.
const MaxOps = 50000

// ComputeRoot is the host GCP puts in every compute selfLink, whatever
// host was called; networksecurity names policies by it too.
const ComputeRoot = "https://www.googleapis.com/compute/v1/"

// An OpError is the error a finished compute operation carries.
type OpError struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	HTTPStatus  int    `json:"httpStatus"`
	HTTPMessage string `json:"httpMessage"`
}
