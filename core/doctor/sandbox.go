package doctor

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/session"
)

// checkSandbox checks what confined sessions (`sluice run`) need:
// bubblewrap, and user namespaces that an ordinary user may create. It
// runs bwrap once, as every session's sandbox begins, and says why
// when that fails: the switch that is off, and how to turn it on.
func checkSandbox(ctx context.Context) Result {
	r := Result{Name: "confined sessions"}
	bwrap, err := session.FindBubblewrap()
	if err != nil {
		r.Status, r.Detail, r.Hint = Warn, "bubblewrap (bwrap) is not installed", "apt install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora); `sluice run` needs it"
		return r
	}
	if why, hint := usernsOff("/proc/sys"); why != "" {
		r.Status, r.Detail, r.Hint = Warn, why, hint
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The namespaces and flags every session's sandbox has: a bubblewrap
	// too old for one of them fails here, not at `sluice run`.
	out, err := session.ProbeBubblewrap(ctx, bwrap)
	if err != nil {
		r.Status, r.Detail = Warn, "bubblewrap at "+bwrap+" cannot create a sandbox: "+strings.TrimSpace(string(out))
		r.Hint = "unprivileged user namespaces may be restricted; see the lines above, or ask your administrator"
		return r
	}
	r.Status, r.Detail = OK, "bubblewrap at "+bwrap+" with unprivileged user namespaces"
	return r
}

// usernsOff says whether a kernel switch under proc (normally /proc/sys)
// keeps ordinary users from creating user namespaces, and how to turn it
// on: Debian's kernel.unprivileged_userns_clone, Ubuntu 24.04's AppArmor
// restriction, or a limit of zero namespaces.
func usernsOff(proc string) (why, hint string) {
	read := func(p string) string {
		b, err := os.ReadFile(proc + "/" + p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("kernel/unprivileged_userns_clone") == "0" {
		return "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)",
			"sudo sysctl -w kernel.unprivileged_userns_clone=1, and add it to /etc/sysctl.d/ to keep it"
	}
	if read("kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later)",
			"allow bubblewrap alone: write /etc/apparmor.d/bwrap with `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }` and run `sudo systemctl reload apparmor`"
	}
	if read("user/max_user_namespaces") == "0" {
		return "user namespaces are limited to none (user.max_user_namespaces = 0)",
			"sudo sysctl -w user.max_user_namespaces=15000, and add it to /etc/sysctl.d/ to keep it"
	}
	return "", ""
}
