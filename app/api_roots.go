package app

import (
	"errors"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// AddRoot allows agents to name repositories under dir: it is saved in
// config.json, where every sidecar reads it on its next call. The running
// app applies it when it restarts (restartRequired says so).
func (api *API) AddRoot(dir string) (SettingsView, error) {
	roots, err := api.app.cfg.AddRoot(dir)
	if err != nil {
		if errors.Is(err, config.ErrInvalid) {
			return SettingsView{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
		}
		return SettingsView{}, err
	}
	v, err := api.Settings()
	if err != nil {
		return SettingsView{}, err
	}
	// What the file now says, even while SLUICE_ALLOWED_ROOTS overrides it
	// for this process (overriddenByEnv then says so).
	v.AllowedRoots = roots
	return v, nil
}
