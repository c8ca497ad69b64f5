package app

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/core/config"
)

// WorkspaceImagesView is the settings screen's choice of workspace image:
// the Engine's local images, the one pinned in config.json, and whether
// the running app and sidecars use it yet.
type WorkspaceImagesView struct {
	Images []WorkspaceImageView `json:"images"`
	// Pinned is the image ID saved in config.json ("" for none).
	Pinned string `json:"pinned"`
	// Running is the image this app runs workspaces on.
	Running string `json:"running"`
	// RestartRequired: Pinned is not what the app (and the sidecars
	// started before the change) run on until they restart.
	RestartRequired bool `json:"restartRequired"`
	// OverriddenByEnv: SLUICE_WORKSPACE_IMAGE is set for this app, so the
	// file's choice does not apply to it.
	OverriddenByEnv bool `json:"overriddenByEnv"`
}

// WorkspaceImages lists the local images for the settings screen.
func (api *API) WorkspaceImages() (WorkspaceImagesView, error) {
	saved, err := config.Load()
	if err != nil {
		return WorkspaceImagesView{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	list, err := listWorkspaceImages(ctx, saved)
	if err != nil {
		return WorkspaceImagesView{}, err
	}
	// The app and every sidecar follow config.json (see App.current): the
	// running image differs from the saved one only while the file does
	// not load.
	running := api.app.current().WorkspaceImage
	return WorkspaceImagesView{Images: list, Pinned: saved.WorkspaceImage, Running: running,
		RestartRequired: saved.WorkspaceImage != running, OverriddenByEnv: config.WorkspaceImageFromEnv()}, nil
}

// UseWorkspaceImage pins a local image (by NAME[:TAG] or ID) in
// config.json, audited as the person's choice; the same as `sluice
// workspace image use`.
func (api *API) UseWorkspaceImage(ref string) (WorkspaceImagesView, error) {
	saved, err := config.Load()
	if err != nil {
		return WorkspaceImagesView{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := pinWorkspaceImage(ctx, saved, api.app.ledger, "owner:"+api.kind, "use", ref, nil); err != nil {
		return WorkspaceImagesView{}, err
	}
	return api.WorkspaceImages()
}
