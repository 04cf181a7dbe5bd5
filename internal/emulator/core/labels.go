package core

import (
	"regexp"
	"strconv"
)

var (
	labelKey   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValue = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// ValidateLabels applies GCP's label rules, compute's and networksecurity's (at most 64, lowercase keys).
func ValidateLabels(labels map[string]string) error {
	if len(labels) > 64 {
		return ErrInvalidField("labels", strconv.Itoa(len(labels)), "At most 64 labels are allowed.")
	}
	for k, v := range labels {
		if !labelKey.MatchString(k) {
			return ErrInvalidField("labels."+k, k, "Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'.")
		}
		if !labelValue.MatchString(v) {
			return ErrInvalidField("labels."+k, v, "Label values must contain only lowercase letters, digits, '_' and '-'.")
		}
	}
	return nil
}
