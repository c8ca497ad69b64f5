package dockerrt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/workspace"
)

// Images. A workspace runs on one image, pinned by its ID in config.json.
// People name images by NAME[:TAG]; Sluice resolves the name once, when
// the person chooses it, and from then on only the ID counts: a tag that
// moves later changes nothing. A pull is by digest only, and the digest is
// verified after the pull, because a tag is whatever the registry says.

// ImageSummary describes one local image.
type ImageSummary struct {
	// ID is the image ID (sha256:…), what gets pinned.
	ID string `json:"id"`
	// Tags are its local names (repo:tag).
	Tags []string `json:"tags"`
	// Digests are the registry digests it was pulled or pushed by
	// (repo@sha256:…).
	Digests []string `json:"digests"`
	Size    int64    `json:"size"`
	// Created is a Unix time (set by ListImages).
	Created int64 `json:"created,omitempty"`
}

// Errors callers branch on.
var (
	// ErrImageNotFound: no local image has this name or ID.
	ErrImageNotFound = &errcode.Error{Code: errcode.InvalidArgument, Msg: "no local image has that name; list them with `sluice workspace image list`, or pull one by digest"}
	// ErrDigestRequired: a pull named a tag, not a digest.
	ErrDigestRequired = &errcode.Error{Code: errcode.InvalidArgument, Msg: "a workspace image is pulled by digest only (NAME@sha256:<64 hex digits>): a tag is whatever the registry serves at the time"}
	// ErrDigestMismatch: what was pulled is not what the digest names.
	ErrDigestMismatch = &errcode.Error{Code: errcode.InvalidArgument, Msg: "the pulled image does not carry the requested digest; nothing was pinned"}
)

// ResolveImage finds a local image by NAME[:TAG] or ID. Nothing is pulled.
func (d *Docker) ResolveImage(ctx context.Context, name string) (ImageSummary, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t\n\x00") {
		return ImageSummary{}, errcode.New(errcode.InvalidArgument, "an image is named NAME[:TAG] or by its ID (sha256:…)")
	}
	if !workspace.ValidImageID(name) {
		if _, err := reference.ParseNormalizedNamed(name); err != nil {
			return ImageSummary{}, errcode.New(errcode.InvalidArgument, "%q is not an image name: %v", name, err)
		}
	}
	ins, err := d.cli.ImageInspect(ctx, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return ImageSummary{}, ErrImageNotFound
		}
		return ImageSummary{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot inspect the image", Err: err}
	}
	if !workspace.ValidImageID(ins.ID) {
		return ImageSummary{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine reported an image ID that is not a sha256 digest: " + ins.ID}
	}
	return ImageSummary{ID: ins.ID, Tags: nonNil(ins.RepoTags), Digests: nonNil(ins.RepoDigests), Size: ins.Size}, nil
}

// ListImages lists the Engine's local images (those with a name or a
// digest; dangling layers are left out), newest first.
func (d *Docker) ListImages(ctx context.Context) ([]ImageSummary, error) {
	list, err := d.cli.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return nil, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine cannot list images", Err: err}
	}
	out := make([]ImageSummary, 0, len(list))
	for _, im := range list {
		tags := slices.DeleteFunc(slices.Clone(im.RepoTags), func(s string) bool { return s == "<none>:<none>" })
		digests := slices.DeleteFunc(slices.Clone(im.RepoDigests), func(s string) bool { return s == "<none>@<none>" })
		if len(tags) == 0 && len(digests) == 0 {
			continue
		}
		out = append(out, ImageSummary{ID: im.ID, Tags: nonNil(tags), Digests: nonNil(digests), Size: im.Size, Created: im.Created})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created > out[j].Created })
	return out, nil
}

// PullImage pulls NAME@sha256:DIGEST and verifies, after the pull, that
// the local image carries exactly that digest. Progress lines from the
// Engine go to progress (may be nil). A reference without a digest is
// refused before anything is asked of a registry.
func (d *Docker) PullImage(ctx context.Context, ref string, progress io.Writer) (ImageSummary, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(ref))
	if err != nil {
		return ImageSummary{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: fmt.Sprintf("%q is not an image reference: %v", ref, err)}
	}
	canon, ok := named.(reference.Canonical)
	if !ok {
		return ImageSummary{}, ErrDigestRequired
	}
	if _, tagged := named.(reference.Tagged); tagged {
		return ImageSummary{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "give the image as NAME@sha256:DIGEST without a tag: with both, the tag would only be a label that says nothing"}
	}
	if err := canon.Digest().Validate(); err != nil {
		return ImageSummary{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: "the digest is not valid: " + err.Error()}
	}
	want := canon.String() // fully qualified, e.g. docker.io/library/x@sha256:…
	// An empty credential: Sluice pulls only public (or local) images and
	// never reads the person's registry credentials.
	auth := base64.URLEncoding.EncodeToString([]byte("{}"))
	rc, err := d.cli.ImagePull(ctx, want, image.PullOptions{RegistryAuth: auth})
	if err != nil {
		return ImageSummary{}, pullError(err)
	}
	defer rc.Close()
	if err := readPullStream(rc, progress); err != nil {
		return ImageSummary{}, pullError(err)
	}
	ins, err := d.cli.ImageInspect(ctx, want)
	if err != nil {
		return ImageSummary{}, &errcode.Error{Code: errcode.Internal, Msg: "the pulled image cannot be inspected", Err: err}
	}
	if !slices.ContainsFunc(ins.RepoDigests, func(s string) bool { return sameRef(s, want) }) {
		return ImageSummary{}, ErrDigestMismatch
	}
	if !workspace.ValidImageID(ins.ID) {
		return ImageSummary{}, &errcode.Error{Code: errcode.Internal, Msg: "the Docker Engine reported an image ID that is not a sha256 digest: " + ins.ID}
	}
	return ImageSummary{ID: ins.ID, Tags: nonNil(ins.RepoTags), Digests: nonNil(ins.RepoDigests), Size: ins.Size}, nil
}

// sameRef compares two references after normalisation (the Engine
// reports docker.io images by their short names).
func sameRef(a, b string) bool {
	na, errA := reference.ParseNormalizedNamed(a)
	nb, errB := reference.ParseNormalizedNamed(b)
	return errA == nil && errB == nil && na.String() == nb.String()
}

// readPullStream drains the Engine's JSON progress stream; an error
// message in it is the pull's failure.
func readPullStream(r io.Reader, progress io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Status   string `json:"status"`
			ID       string `json:"id"`
			Progress string `json:"progress"`
			Error    string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
		if progress != nil && msg.Status != "" && msg.Progress == "" {
			line := msg.Status
			if msg.ID != "" {
				line = msg.ID + ": " + line
			}
			fmt.Fprintln(progress, line)
		}
	}
}

// pullError keeps the Engine's message (it names the registry's answer)
// under a stable code.
func pullError(err error) error {
	if cerrdefs.IsNotFound(err) {
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "the registry has no image with that digest: " + err.Error(), Err: err}
	}
	return &errcode.Error{Code: errcode.Unsupported, Msg: "the image could not be pulled: " + err.Error(), Err: err}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
