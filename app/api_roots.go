package app

import (
	"errors"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// AddRoot allows agents to name repositories under dir: it is saved in
// config.json, where the app and every running sidecar read it on their
// next request; nothing needs a restart.
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
