package core

import "time"

// A Permission is the IAM permission a method needs, and whether it writes.
type Permission struct {
	Name  string
	Write bool
}

// Store is what every API that keeps its state in the server's one store
// gets of it: its lock, its clock and its ids.
type Store interface {
	// Lock and Unlock guard the store, the API's state included.
	Lock()
	Unlock()
	Now() time.Time
	Gen() *Gen
}
