package app

import (
	"fmt"

	"fyne.io/systray"
)

// tray is the status icon: the pending count, and a way back to the window
// once it is closed.
type tray struct {
	app  *App
	show func()
	quit func()
	// ready is closed when onReady is done; refresh is then its update of
	// the title, tooltip and count (see settle).
	ready   chan struct{}
	refresh func()
}

// settle sets the item's icon, title and tooltip again once systray's
// start has returned. systray runs onReady beside its start, which takes
// the item's properties as they are at one moment and only then exports
// them: what onReady set after that moment but before the export was
// kept nowhere, and the item stayed without a title until the count next
// changed. After start the properties are exported, so these stick.
func (t *tray) settle() {
	<-t.ready
	systray.SetIcon(trayIcon())
	t.refresh()
}

func (t *tray) onReady() {
	systray.SetIcon(trayIcon())
	systray.SetTitle("Sluice")
	systray.SetTooltip("Sluice")
	count := systray.AddMenuItem("No proposals waiting", "Proposals waiting for a decision")
	count.Disable()
	systray.AddSeparator()
	open := systray.AddMenuItem("Open Sluice", "Show the Sluice window")
	pause := systray.AddMenuItemCheckbox("Pause notifications", "Stop desktop notifications for new proposals", !t.app.notifications.Load())
	systray.AddSeparator()
	quit := systray.AddMenuItem("Quit", "Stop Sluice; agents cannot propose until it runs again")
	systray.SetOnTapped(t.show)

	refresh := func() {
		n := t.app.pendingCount()
		label := "No proposals waiting"
		switch {
		case n == 1:
			label = "1 proposal waiting"
		case n > 1:
			label = fmt.Sprintf("%d proposals waiting", n)
		}
		count.SetTitle(label)
		systray.SetTooltip("Sluice — " + label)
		systray.SetTitle(windowTitle(n))
	}
	refresh()
	t.refresh = refresh
	defer close(t.ready)
	events, _ := t.app.events.Subscribe()
	go func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				switch {
				case countChanges(ev.Name):
					refresh()
				case ev.Name == "app:notifications":
					if on, _ := ev.Data.(bool); on {
						pause.Uncheck()
					} else {
						pause.Check()
					}
				}
			case <-open.ClickedCh:
				t.show()
			case <-pause.ClickedCh:
				t.app.setNotifications(pause.Checked())
			case <-quit.ClickedCh:
				t.quit()
			}
		}
	}()
}

// windowTitle is the title of the window and the tray item: "Sluice", or
// "Sluice (3)" while three proposals wait.
func windowTitle(pending int) string {
	if pending > 0 {
		return fmt.Sprintf("Sluice (%d)", pending)
	}
	return "Sluice"
}

// countChanges says whether an event can change the pending count.
func countChanges(event string) bool {
	switch event {
	case "proposal:created", "proposal:updated", "proposals:resync":
		return true
	}
	return false
}
