// Package core is what every API the emulator serves shares and what
// imports none of them: Google's two JSON error formats (compute's and the
// newer APIs'), the JSON answer, request bodies, ids and operation names,
// and what the compute APIs share: scopes, lists, JSON values, timestamps.
// The server (package emulator) and the API packages import it; it
// imports neither, so there is no cycle.
package core
