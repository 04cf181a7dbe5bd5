// Command function serves the IPAllowlist composition function over gRPC.
package main

import (
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	function "github.com/crossplane/function-sdk-go"

	fn "github.com/armorplane/provider-cloudarmor/internal/function"
	"github.com/armorplane/provider-cloudarmor/internal/version"
)

func main() {
	var (
		app      = kingpin.New(filepath.Base(os.Args[0]), "The IPAllowlist composition function: keeps node and office addresses in a Cloud Armor policy.").DefaultEnvars()
		debug    = app.Flag("debug", "Emit debug logs.").Short('d').Bool()
		network  = app.Flag("network", "Network on which to listen for gRPC connections.").Default("tcp").String()
		address  = app.Flag("address", "Address at which to listen for gRPC connections.").Default(":9443").String()
		tlsCerts = app.Flag("tls-certs-dir", "Directory holding the server's tls.crt, tls.key and the clients' ca.crt.").Envar("TLS_SERVER_CERTS_DIR").String()
		insecure = app.Flag("insecure", "Serve without mutual TLS (local development and tests only).").Bool()
		metrics  = app.Flag("metrics-address", "Address of the Prometheus metrics endpoint (gRPC server metrics); empty disables it.").Default(function.DefaultMetricsAddress).String()
	)
	app.Version(version.Version)
	kingpin.MustParse(app.Parse(os.Args[1:]))

	log, err := function.NewLogger(*debug)
	kingpin.FatalIfError(err, "cannot create a logger")

	kingpin.FatalIfError(function.Serve(fn.New(log),
		function.Listen(*network, *address),
		function.MTLSCertificates(*tlsCerts),
		function.Insecure(*insecure),
		function.WithMetricsServer(*metrics)), "cannot serve the function")
}
