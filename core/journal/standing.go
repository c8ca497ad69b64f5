package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/proposal"
)

// Standing is where a proposal's record stands: its state and when it
// last changed.
type Standing struct {
	State     proposal.State
	UpdatedAt time.Time
}

// Standings returns the standing of each of ids that has a record (an id
// without one is left out), in one read. Only the state and the time of
// each record are decoded, not its proposal: the app's tending of sealed
// objects asks this of every proposal a repository keeps.
func (j *Journal) Standings(ids []string) (map[string]Standing, error) {
	out := make(map[string]Standing, len(ids))
	err := j.db.View(func(tx *bolt.Tx) error {
		props := tx.Bucket(bucketProposals)
		for _, id := range ids {
			v := props.Get([]byte(id))
			if v == nil {
				continue
			}
			var rec struct {
				State     proposal.State     `json:"state"`
				UpdatedAt proposal.Timestamp `json:"updatedAt"`
			}
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("record %s: %w", id, err)
			}
			out[id] = Standing{State: rec.State, UpdatedAt: rec.UpdatedAt.Time}
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: standings: %w", err)
	}
	return out, nil
}

// Repos lists every repository that has a record, in byte order. It reads
// one key of the byrepo index per repository, seeking past the rest.
func (j *Journal) Repos() ([]string, error) {
	var out []string
	err := j.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketByRepo).Cursor()
		for k, _ := c.First(); k != nil; {
			repo, _, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return fmt.Errorf("byrepo key %q has no repository", k)
			}
			out = append(out, string(repo))
			k, _ = c.Seek(append(bytes.Clone(repo), 1))
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("journal: repositories: %w", err)
	}
	return out, nil
}
