package app

import (
	"errors"

	"github.com/sluicehq/sluice/core/config"
)

// AddRoot allows agents to name repositories under dir: it is saved in
// config.json, where every sidecar reads it on its next call. The running
// app applies it when it restarts (restartRequired says so).
func (api *API) AddRoot(dir string) (SettingsView, error) {
	if _, err := api.app.cfg.AddRoot(dir); err != nil {
		if errors.Is(err, config.ErrInvalid) {
			return SettingsView{}, &codedError{code: "invalid_argument", msg: err.Error()}
		}
		return SettingsView{}, err
	}
	return api.Settings()
}
