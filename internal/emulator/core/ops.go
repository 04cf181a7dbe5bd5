package core

// MaxOps bounds how many finished operations are remembered, so that long
// benchmark and chaos runs do not grow without limit.
const MaxOps = 50000
