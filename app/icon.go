package app

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// trayIcon is Sluice's mark (three waves on a teal square), drawn once:
// a tray icon needs PNG bytes and the design is simple enough to draw.
var trayIcon = sync.OnceValue(func() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	bg := color.NRGBA{0x1f, 0x6f, 0x8b, 0xff}
	fg := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			// Rounded corners.
			dx, dy := min(x, n-1-x), min(y, n-1-y)
			if dx < 4 && dy < 4 && (4-dx)*(4-dx)+(4-dy)*(4-dy) > 16 {
				continue
			}
			img.Set(x, y, bg)
		}
	}
	for _, base := range []int{9, 16, 23} {
		for x := 5; x < n-5; x++ {
			// A gentle wave: two pixels thick.
			off := []int{0, 1, 1, 0, -1, -1}[(x/2)%6]
			img.Set(x, base+off, fg)
			img.Set(x, base+off+1, fg)
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
})
