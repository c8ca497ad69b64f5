// Command sluice is the Sluice app: the desktop window (built with the
// Wails tags desktop,production,webkit2_41) or, in any build, `sluice serve`
// for machines without a display. See `sluice help`.
package main

import (
	"embed"
	"io/fs"
	"os"

	"github.com/sluicehq/sluice/app"
)

//go:embed all:frontend/dist
var dist embed.FS

func main() {
	assets, err := fs.Sub(dist, "frontend/dist")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	os.Exit(app.Main(os.Args[1:], assets, os.Stdout, os.Stderr))
}
