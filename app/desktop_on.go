//go:build desktop

package app

// desktopBuild is true when the binary was built with the Wails desktop
// tags (see Makefile), i.e. it can open a window.
const desktopBuild = true
