package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/core/gateway"
)

// binDir holds the binaries that `make build` produced.
func binDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SLUICE_BIN_DIR")
	ok := dir != ""
	if ok {
		for _, b := range []string{"sluice", "sluice-sidecar", "sluice-sidecar-stdio", "sluice-headless"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				ok = false
			}
		}
	}
	needOrSkip(t, ok, "SLUICE_BIN_DIR with sluice, sluice-sidecar and sluice-sidecar-stdio (make build)")
	return dir
}

// startXvfb starts a private X server and returns its DISPLAY value.
func startXvfb(t *testing.T) string {
	t.Helper()
	xvfb, err := exec.LookPath("Xvfb")
	needOrSkip(t, err == nil, "Xvfb (apt install xvfb)")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb display: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// desktopWait is how long an end-to-end test waits for each thing it
// looks for (the tray, the window, a notification, a page's call, a
// process's output): a backstop, not a figure; the race detector and the
// rest of the suite's parallel tests can hold a freshly started app,
// browser or helper back for many seconds.
const desktopWait = 90 * time.Second

// itemName finds a registered tray item's bus name in dbus-send output.
var itemName = regexp.MustCompile(`string "(:[0-9]+\.[0-9]+)"`)

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBinaries_Version_Stamped(t *testing.T) {
	dir := binDir(t)
	for _, b := range []string{"sluice", "sluice-sidecar", "sluice-sidecar-stdio", "sluice-headless"} {
		out, err := exec.Command(filepath.Join(dir, b), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", b, err, out)
		}
		f := strings.Fields(string(out))
		name := strings.TrimSuffix(b, "-headless")
		if len(f) != 2 || f[0] != name || f[1] == "dev" || f[1] == "" {
			t.Errorf("%s --version = %q; want %q and a version stamped at build time", b, out, b+" <version>")
		}
	}
}

// startSessionBus starts a private D-Bus session bus and returns its
// address.
func startSessionBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	needOrSkip(t, err == nil, "dbus-daemon (apt install dbus)")
	cmd := exec.Command(bin, "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus address: %v", err)
	}
	return strings.TrimSpace(line)
}

// startBackground starts a helper program for the test's lifetime.
func startBackground(t *testing.T, env []string, out io.Writer, name string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath(name)
	needOrSkip(t, err == nil, name)
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// TestDesktop_Window_StartsAndServes runs the real desktop binary under Xvfb
// with a private D-Bus session bus and a notification server: the window
// loads the front end, which calls a bound method (logged as "frontend
// ready"); a screenshot is kept; the gateway answers; a real sidecar sees
// the app; the tray icon registers on the bus; and a proposal from the
// sidecar raises a notification that names the agent and the operation and
// carries no diff text; closing the window hides it and leaves the app,
// its gateway and its tray running; and clicking the notification shows
// the window again on the proposal's page.
func TestDesktop_Window_StartsAndServes(t *testing.T) {
	dir := binDir(t)
	importBin, err := exec.LookPath("import")
	needOrSkip(t, err == nil, "import (apt install imagemagick)")
	dbusSend, err := exec.LookPath("dbus-send")
	needOrSkip(t, err == nil, "dbus-send (apt install dbus)")
	display := startXvfb(t)
	bus := startSessionBus(t)

	home := t.TempDir()
	root := filepath.Join(home, "src")
	repo := gitRepo(t, root, "widgets")
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"DISPLAY=" + display,
		"NO_AT_BRIDGE=1",
		"DBUS_SESSION_BUS_ADDRESS=" + bus,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_RUNTIME_DIR=" + t.TempDir(),
		"SLUICE_ALLOWED_ROOTS=" + root,
	}
	var notes syncBuffer
	startBackground(t, env, io.Discard, "dunst", "-config", "/dev/null")
	// A standalone StatusNotifierWatcher stands in for a desktop's panel:
	// tray icons register with it.
	startBackground(t, env, io.Discard, "status-notifier-watcher")
	startBackground(t, env, &notes, "dbus-monitor", "--session",
		"interface='org.freedesktop.Notifications',member='Notify'")
	var out syncBuffer
	cmd := exec.Command(filepath.Join(dir, "sluice"))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so that WebKit's helpers end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start desktop app: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("app output:\n%s", out.String())
		}
	})

	waitFor(t, desktopWait, "the front end to call Ready", func() bool {
		return strings.Contains(out.String(), `msg="frontend ready" ui=desktop`)
	})

	// Keep a screenshot of the whole screen once WebKit has painted.
	shot := filepath.Join(artifactDir(t), "desktop-empty-state.png")
	screenshotPainted(t, importBin, display, shot)

	gwFile := filepath.Join(home, "config", "sluice", "gateway.json")
	c, err := gateway.NewClientFromEndpoint(gwFile)
	if err != nil {
		t.Fatalf("gateway.json: %v", err)
	}
	if h, err := c.Health(context.Background()); err != nil || h.Status != "ok" {
		t.Fatalf("gateway health: %+v %v", h, err)
	}

	// A real sidecar process finds the app through gateway.json.
	sc := exec.Command(filepath.Join(dir, "sluice-sidecar"))
	sc.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-e2e", Version: "1"}, nil)
	// Each call to it is bounded on its own (a backstop): the waits
	// between them can add up to minutes under load.
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), desktopWait)
		t.Cleanup(cancel)
		return ctx
	}
	sess, err := client.Connect(ctx(), &mcp.CommandTransport{Command: sc}, nil)
	if err != nil {
		t.Fatalf("connect sidecar: %v", err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx(), &mcp.CallToolParams{Name: "sluice_capabilities"})
	if err != nil || res.IsError {
		t.Fatalf("sluice_capabilities: %v %+v", err, res)
	}
	var caps struct {
		Gateway struct {
			Reachable  bool   `json:"reachable"`
			AppVersion string `json:"appVersion"`
		} `json:"gateway"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &caps); err != nil {
		t.Fatal(err)
	}
	if !caps.Gateway.Reachable || caps.Gateway.AppVersion == "" {
		t.Fatalf("sidecar does not see the desktop app: %s", b)
	}

	// The tray icon registered with the panel's watcher.
	dbusCmd := func(args ...string) string {
		// A reply that is slow under load is asked again rather than
		// waited on for dbus-send's default 25 s.
		c := exec.Command(dbusSend, append([]string{"--session", "--print-reply", "--reply-timeout=5000"}, args...)...)
		c.Env = env
		b, _ := c.Output()
		return string(b)
	}
	var registered string
	waitFor(t, desktopWait, "the tray icon to register with the watcher", func() bool {
		registered = dbusCmd("--dest=org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher",
			"org.freedesktop.DBus.Properties.Get", "string:org.kde.StatusNotifierWatcher",
			"string:RegisteredStatusNotifierItems")
		return itemName.MatchString(registered)
	})
	item := itemName.FindStringSubmatch(registered)[1]
	titleOf := func(item string) string {
		return dbusCmd("--dest="+item, "/StatusNotifierItem", "org.freedesktop.DBus.Properties.Get",
			"string:org.kde.StatusNotifierItem", "string:Title")
	}
	trayTitle := func() string { return titleOf(item) }
	// The item can register before its properties are set: wait for the
	// title rather than read it once. The watcher's list is read again
	// each time, and every item in it asked: an item registered again
	// (the watcher restarted, the app's connection replaced) has a name
	// the first read did not hold. What was seen last is reported.
	var lastTitles []string
	lastSeen := ""
	waitFor(t, desktopWait, `the tray title "Sluice" before any proposal`, func() bool {
		registered = dbusCmd("--dest=org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher",
			"org.freedesktop.DBus.Properties.Get", "string:org.kde.StatusNotifierWatcher",
			"string:RegisteredStatusNotifierItems")
		lastTitles = lastTitles[:0]
		for _, m := range itemName.FindAllStringSubmatch(registered, -1) {
			title := titleOf(m[1])
			lastTitles = append(lastTitles, m[1]+" → "+strings.TrimSpace(title))
			if strings.Contains(title, `"Sluice"`) {
				item = m[1]
				return true
			}
		}
		if seen := fmt.Sprintf("tray items %q answer %q", registered, lastTitles); seen != lastSeen {
			t.Log(seen) // each new answer once
			lastSeen = seen
		}
		return false
	})

	// A proposal raises one notification: agent and operation, no diff.
	secret := "line-that-must-not-leak-7f3a"
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hello\n"+secret+"\n"), 0o644)
	res, err = sess.CallTool(ctx(), &mcp.CallToolParams{Name: "propose_commit", Arguments: map[string]any{
		"repoPath": repo, "reason": "Add a line", "message": "Add a line", "paths": []string{"README.md"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("propose_commit: %v %+v", err, res)
	}
	pid := res.StructuredContent.(map[string]any)["proposalId"].(string)
	waitFor(t, desktopWait, "the card in the window", func() bool {
		return strings.Contains(out.String(), `msg="cards shown" ui=desktop screen=pending count=1 ids=`+pid)
	})
	waitFor(t, desktopWait, "a desktop notification", func() bool {
		return strings.Contains(notes.String(), "desktop-e2e proposes a commit on widgets")
	})
	if strings.Contains(notes.String(), secret) || strings.Contains(notes.String(), "README.md") {
		t.Fatalf("the notification carries file contents or paths:\n%s", notes.String())
	}
	// The window's title and the tray's carry the pending count.
	windowsNamed := func(re string) []string {
		c := exec.Command("xdotool", "search", "--onlyvisible", "--name", re)
		c.Env = env
		b, _ := c.Output()
		return strings.Fields(string(b))
	}
	waitFor(t, desktopWait, `the window title "Sluice (1)"`, func() bool { return len(windowsNamed(`^Sluice \(1\)$`)) > 0 })
	waitFor(t, desktopWait, `the tray title "Sluice (1)"`, func() bool { return strings.Contains(trayTitle(), `"Sluice (1)"`) })
	// The window shrinks below 720 px (the UI has a narrow layout).
	xdo := func(args ...string) string {
		c := exec.Command("xdotool", args...)
		c.Env = env
		b, _ := c.CombinedOutput()
		return string(b)
	}
	win := windowsNamed(`^Sluice \(1\)$`)[0]
	xdo("windowsize", win, "420", "600")
	waitFor(t, desktopWait, "the window to be 420 px wide", func() bool {
		return strings.Contains(xdo("getwindowgeometry", win), "Geometry: 420x")
	})
	// Closing the window hides it; the app, its gateway and its tray stay.
	windows := func() []string { return windowsNamed(`^Sluice( \([0-9]+\))?$`) }
	shown := windows()
	if len(shown) == 0 {
		t.Fatalf("no visible window named Sluice")
	}
	for _, w := range shown {
		closeWindow(t, env, w)
	}
	waitFor(t, desktopWait, "the closed window to hide", func() bool { return len(windows()) == 0 })
	if h, err := c.Health(context.Background()); err != nil || h.Status != "ok" {
		t.Fatalf("gateway health after the window closed: %+v %v", h, err)
	}
	if got := trayTitle(); !strings.Contains(got, "Sluice") {
		t.Fatalf("tray after the window closed: %s", got)
	}

	// Clicking the notification (the server's default action) shows the
	// window again, on that proposal's page.
	dunstctl := exec.Command("dunstctl", "action", "0")
	dunstctl.Env = env
	if b, err := dunstctl.CombinedOutput(); err != nil {
		t.Fatalf("dunstctl action: %v\n%s", err, b)
	}
	waitFor(t, desktopWait, "the notification's click to open the proposal's page", func() bool {
		return strings.Contains(out.String(), `msg="cards shown" ui=desktop screen=proposal count=1 ids=`+pid)
	})
	waitFor(t, desktopWait, "the window to show again", func() bool { return len(windows()) > 0 })
	waitFor(t, desktopWait, "the tray to count the pending proposal", func() bool {
		return strings.Contains(trayTitle(), "Sluice (1)")
	})
	screenshotPainted(t, importBin, display, filepath.Join(artifactDir(t), "desktop-pending.png"))

	// SIGTERM ends the app cleanly and withdraws gateway.json.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		stopped = true
	case <-time.After(desktopWait):
		t.Fatalf("desktop app did not exit on SIGTERM within %s", desktopWait)
	}
	if _, err := os.Stat(gwFile); !os.IsNotExist(err) {
		t.Errorf("gateway.json left behind after exit: %v", err)
	}
	fmt.Fprintf(os.Stderr, "desktop screenshot: %s\n", shot)
}

// screenshotPainted keeps a screenshot of the whole X screen at path,
// taken again until it is not blank and has settled: WebKit paints after
// the page's calls return, and a loaded machine can hold that paint back
// for seconds. A screen without the painted page is near-solid and
// compresses to well under 10 KB; any of the app's pages is several times
// that. A painted page can still be loading its data, so the shot kept is
// one whose pixels match the one before it (after 20 painted shots that
// never matched, as on a page with an animation, the last one is kept).
func screenshotPainted(t *testing.T, importBin, display, path string) {
	t.Helper()
	var prev []byte
	painted := 0
	waitFor(t, desktopWait, "a screenshot that is not blank at "+path, func() bool {
		if b, err := exec.Command(importBin, "-display", display, "-window", "root", path).CombinedOutput(); err != nil {
			t.Fatalf("screenshot: %v\n%s", err, b)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("screenshot %s: %v", path, err)
		}
		if st.Size() < 10_000 {
			return false
		}
		painted++
		px := screenPixels(t, path)
		settled := prev != nil && bytes.Equal(px, prev)
		prev = px
		return settled || painted >= 20
	})
}

// screenPixels is the RGBA pixels of the PNG at path.
func screenPixels(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	rgba := image.NewRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	return rgba.Pix
}

// closeWindow asks the X window id to close, as a window manager does when
// its close button is clicked: a WM_DELETE_WINDOW client message (through
// libX11, from Python's ctypes; xdotool's windowclose destroys the window
// instead).
func closeWindow(t *testing.T, env []string, id string) {
	t.Helper()
	const script = `
import ctypes, sys
x = ctypes.cdll.LoadLibrary("libX11.so.6")
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
class ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("l", ctypes.c_long * 5)]
class Event(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]
x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(Event)]
x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
d = x.XOpenDisplay(None)
if not d:
    sys.exit("cannot open the display")
w = int(sys.argv[1])
ev = Event()
ev.xclient.type = 33  # ClientMessage
ev.xclient.window = w
ev.xclient.message_type = x.XInternAtom(d, b"WM_PROTOCOLS", 0)
ev.xclient.format = 32
ev.xclient.l[0] = x.XInternAtom(d, b"WM_DELETE_WINDOW", 0)
if not x.XSendEvent(d, w, 0, 0, ctypes.byref(ev)):
    sys.exit("XSendEvent failed")
x.XSync(d, 0)
`
	c := exec.Command("python3", "-c", script, id)
	c.Env = env
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("close window %s: %v\n%s", id, err, b)
	}
}
