package app

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace/dockerrt"
)

const workspaceUsage = `usage: sluice workspace grant --id WS [--secret NAME] [--egress host,host] [--revoke-secret NAME]
       sluice workspace stop WS [--yes]
       sluice workspace destroy WS [--yes]
       sluice workspace image list
       sluice workspace image use NAME[:TAG]
       sluice workspace image pull NAME@sha256:DIGEST`

// runWorkspace is `sluice workspace grant …`: the terminal's way to make a
// human-only grant. The secret's value comes from standard input so that
// it never appears in a process list or a shell history. `sluice
// workspace image …` chooses the image workspaces run on.
func runWorkspace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "image" {
		return runWorkspaceImage(args[1:], stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "stop" || args[0] == "destroy") {
		return runWorkspaceEnd(args, stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "grant" {
		fmt.Fprintln(stderr, workspaceUsage)
		return 2
	}
	fs := flag.NewFlagSet("workspace grant", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "the workspace")
	secret := fs.String("secret", "", "grant a secret under this environment variable name; its value is read from standard input")
	revoke := fs.String("revoke-secret", "", "take a secret away")
	egress := fs.String("egress", "", "comma-separated hosts (host or host:port) the workspace's runs may reach through Sluice's proxy; \"none\" takes access away")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	g := GrantRequest{ID: *id, SecretName: *secret, RevokeSecret: *revoke}
	switch *egress {
	case "":
	case "none":
		g.Egress = []string{}
	default:
		g.Egress = strings.Split(*egress, ",")
	}
	if g.SecretName != "" {
		line, err := bufio.NewReader(io.LimitReader(stdin, 64<<10)).ReadString('\n')
		if err != nil && err != io.EOF {
			fmt.Fprintln(stderr, "sluice: reading the secret:", err)
			return 1
		}
		g.SecretValue = strings.TrimRight(line, "\r\n")
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	ledger, _, err := audit.SetupFor(cfg).Open()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	defer ledger.Close()
	m := openWorkspaces(cfg, newLogger(stderr))
	if m != nil {
		defer m.Close()
	}
	notice, err := grantWorkspace(m, ledger, "owner:terminal", g)
	if notice != "" {
		fmt.Fprintln(stderr, "sluice:", notice)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	fmt.Fprintln(stdout, "granted")
	return 0
}

// runWorkspaceImage is `sluice workspace image list|use|pull`.
func runWorkspaceImage(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] == "list" && len(args) != 1) || (args[0] != "list" && len(args) != 2) {
		fmt.Fprintln(stderr, workspaceUsage)
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch args[0] {
	case "list":
		images, err := listWorkspaceImages(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
		printImages(stdout, cfg.WorkspaceImage, images)
		return 0
	case "use", "pull":
		ledger, _, err := audit.SetupFor(cfg).Open()
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
		defer ledger.Close()
		var progress io.Writer
		if args[0] == "pull" {
			progress = stderr
		}
		im, err := pinWorkspaceImage(ctx, cfg, ledger, "owner:terminal", args[0], args[1], progress)
		if err != nil {
			fmt.Fprintln(stderr, "sluice:", err)
			return 1
		}
		fmt.Fprintf(stdout, "workspaceImage %s (%s) pinned in %s\n", im.ID, strings.Join(append(im.Tags, im.Digests...), ", "), cfg.ConfigDir+"/config.json")
		fmt.Fprintln(stdout, "restart Sluice and your agent's MCP server (the sidecar) for them to use it")
		if config.WorkspaceImageFromEnv() {
			fmt.Fprintln(stderr, "sluice: note: SLUICE_WORKSPACE_IMAGE is set in this environment and overrides config.json for processes started with it; unset it")
		}
		return 0
	default:
		fmt.Fprintln(stderr, workspaceUsage)
		return 2
	}
}

// WorkspaceImageView is one local image as the settings screen and
// `sluice workspace image list` show it.
type WorkspaceImageView struct {
	dockerrt.ImageSummary
	// InUse marks the image pinned in config.json.
	InUse bool `json:"inUse"`
}

// listWorkspaceImages lists the Engine's local images, the pinned one
// marked (and listed even when it is no longer present, so that this is
// visible).
func listWorkspaceImages(ctx context.Context, cfg *config.Config) ([]WorkspaceImageView, error) {
	d, err := dockerFor(ctx)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	list, err := d.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]WorkspaceImageView, 0, len(list)+1)
	found := false
	for _, im := range list {
		v := WorkspaceImageView{ImageSummary: im, InUse: im.ID == cfg.WorkspaceImage}
		found = found || v.InUse
		out = append(out, v)
	}
	if cfg.WorkspaceImage != "" && !found {
		out = append(out, WorkspaceImageView{ImageSummary: dockerrt.ImageSummary{ID: cfg.WorkspaceImage, Tags: []string{"(not present in the Docker Engine)"}, Digests: []string{}}, InUse: true})
	}
	return out, nil
}

func dockerFor(ctx context.Context) (*dockerrt.Docker, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return dockerrt.New(ctx)
}

// pinWorkspaceImage resolves a local image by name (how "use"), or pulls
// one by digest and verifies it (how "pull"), and pins its ID in
// config.json, audited first: if the entry cannot be written, nothing is
// pinned. A failure at any step leaves config.json as it was.
func pinWorkspaceImage(ctx context.Context, cfg *config.Config, ledger *audit.Ledger, by, how, ref string, progress io.Writer) (dockerrt.ImageSummary, error) {
	d, err := dockerFor(ctx)
	if err != nil {
		return dockerrt.ImageSummary{}, err
	}
	defer d.Close()
	var im dockerrt.ImageSummary
	switch how {
	case "use":
		im, err = d.ResolveImage(ctx, ref)
	case "pull":
		im, err = d.PullImage(ctx, ref, progress)
	default:
		err = &errcode.Error{Code: errcode.InvalidArgument, Msg: "unknown way to choose an image: " + how}
	}
	if err != nil {
		return dockerrt.ImageSummary{}, err
	}
	if _, err := ledger.Append(audit.Entry{EventType: "workspace_image_pinned", Approval: by, Result: "ok",
		Data: map[string]any{"image": im.ID, "how": how}}); err != nil {
		return dockerrt.ImageSummary{}, &errcode.Error{Code: errcode.AuditFailed, Msg: "no image was pinned because the audit ledger could not be written"}
	}
	if err := cfg.SaveWorkspaceImage(im.ID); err != nil {
		return dockerrt.ImageSummary{}, err
	}
	return im, nil
}

func printImages(w io.Writer, pinned string, images []WorkspaceImageView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IN USE\tIMAGE ID\tNAMES")
	for _, im := range images {
		mark := ""
		if im.InUse {
			mark = "*"
		}
		names := strings.Join(append(append([]string{}, im.Tags...), im.Digests...), " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, im.ID, names)
	}
	tw.Flush()
	if pinned == "" {
		fmt.Fprintln(w, "no workspace image is pinned: choose one with `sluice workspace image use NAME[:TAG]`")
	}
}
