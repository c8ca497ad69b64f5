package app

import (
	"errors"
	"slices"

	"github.com/sluicehq/sluice/core/config"
	"github.com/sluicehq/sluice/core/errcode"
)

// SettingsView is the settings screen.
type SettingsView struct {
	config.Settings
	AvailableToolsets []string `json:"availableToolsets"`
	// OverriddenByEnv are settings an environment variable overrides.
	OverriddenByEnv []string `json:"overriddenByEnv"`
	// RestartRequired lists saved settings that the running app has not
	// applied yet.
	RestartRequired []string `json:"restartRequired"`
}

// Settings returns the saved settings and what differs from the running
// app.
func (api *API) Settings() (SettingsView, error) {
	saved, err := config.Load()
	if err != nil {
		return SettingsView{}, err
	}
	return api.app.settingsView(saved.Settings()), nil
}

func (a *App) settingsView(s config.Settings) SettingsView {
	// Roots and expiry follow config.json while the app runs (current):
	// they differ from what was saved only when the file stopped loading.
	run := a.current().Settings()
	// A rule made from a card may have created and configured the file.
	run.PolicyFile = a.rules.file()
	v := SettingsView{Settings: s, AvailableToolsets: append([]string{}, config.KnownToolsets...),
		OverriddenByEnv: config.OverriddenByEnv(), RestartRequired: []string{}}
	if v.OverriddenByEnv == nil {
		v.OverriddenByEnv = []string{}
	}
	if !slices.Equal(s.AllowedRoots, run.AllowedRoots) {
		v.RestartRequired = append(v.RestartRequired, "allowedRoots")
	}
	if s.PendingExpiry != run.PendingExpiry {
		v.RestartRequired = append(v.RestartRequired, "pendingExpiry")
	}
	if s.PolicyFile != run.PolicyFile {
		v.RestartRequired = append(v.RestartRequired, "policyFile")
	}
	return v
}

// SaveSettings validates and writes the settings. Notifications, roots
// and the pending expiry apply at once, in the app and in every running
// sidecar (on its next call); toolsets apply to sidecars started
// afterwards; the policy file applies when the app restarts (it is then
// listed in restartRequired).
func (api *API) SaveSettings(s config.Settings) (SettingsView, error) {
	a := api.app
	if err := a.cfg.SaveSettings(s); err != nil {
		if errors.Is(err, config.ErrInvalid) {
			return SettingsView{}, &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error()}
		}
		return SettingsView{}, err
	}
	a.setNotifications(s.Notifications)
	return api.Settings()
}
