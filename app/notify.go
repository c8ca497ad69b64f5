package app

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/esiqveland/notify"
	"github.com/godbus/dbus/v5"

	"github.com/sluicehq/sluice/core/journal"
)

// Notifier shows desktop notifications. onClick receives the proposal id
// of a notification the person clicked.
type Notifier interface {
	Notify(title, body, proposalID string) error
	Close() error
}

// noteText is the notification for a new proposal: who wants what, where.
// It never carries file contents, paths inside the repository or diff
// text: notifications are visible on a locked screen and in history.
func noteText(rec journal.Record) (title, body string) {
	p := rec.Proposal
	agent, hidden1 := visible(p.Agent)
	repo, hidden2 := visible(filepath.Base(p.Repo))
	title = fmt.Sprintf("%s proposes %s on %s", agent, p.Op.Phrase(), repo)
	body = "Open Sluice to review and decide."
	if p.Destructive() {
		body = "This change can lose work. Open Sluice to review and decide."
	}
	if hidden1 || hidden2 || len(invisibleOf(p)) > 0 {
		body = "It contains hidden characters. " + body
	}
	return title, body
}

// dbusNotifier talks to org.freedesktop.Notifications on the session bus,
// with a default action so that clicking a notification opens its card.
type dbusNotifier struct {
	conn *dbus.Conn
	n    notify.Notifier
	mu   sync.Mutex
	ids  map[uint32]string // notification id → proposal id
}

// newDBusNotifier connects to the session bus. onClick runs on the
// notifier's goroutine.
func newDBusNotifier(onClick func(proposalID string)) (*dbusNotifier, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, err
	}
	d := &dbusNotifier{conn: conn, ids: map[uint32]string{}}
	n, err := notify.New(conn, notify.WithOnAction(func(s *notify.ActionInvokedSignal) {
		d.mu.Lock()
		id := d.ids[s.ID]
		d.mu.Unlock()
		if id != "" && onClick != nil {
			onClick(id)
		}
	}))
	if err != nil {
		conn.Close()
		return nil, err
	}
	d.n = n
	return d, nil
}

func (d *dbusNotifier) Notify(title, body, proposalID string) error {
	id, err := d.n.SendNotification(notify.Notification{
		AppName:       "Sluice",
		AppIcon:       "dialog-information",
		Summary:       title,
		Body:          body,
		Actions:       []notify.Action{notify.NewDefaultAction("Open")},
		ExpireTimeout: notify.ExpireTimeoutSetByNotificationServer,
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.ids[id] = proposalID
	d.mu.Unlock()
	return nil
}

func (d *dbusNotifier) Close() error {
	err := d.n.Close()
	d.conn.Close()
	return err
}
