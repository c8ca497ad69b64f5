// Command apigen writes the TypeScript client of the UI's API
// (frontend/src/api.gen.ts) from the route table and the Go types in
// package app. It runs from `go generate ./app`; the app's test
// TestUIAPI_GeneratedClient_Current fails when the file is stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/app"
)

func main() {
	out := flag.String("o", "", "the file to write")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "apigen: -o FILE is required")
		os.Exit(2)
	}
	src, err := app.GenerateUIClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apigen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apigen:", err)
		os.Exit(1)
	}
}
