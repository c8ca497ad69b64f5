package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/core/proposal"
)

// proposalCache keeps decoded proposals by id. A record's proposal never
// changes after submit, yet the record is read again at every transition,
// and decoding a large proposal (a patch of a thousand files) costs
// milliseconds each time: strict decoding of the proposal and then of its
// arguments. The cache hands back the decoded proposal only when the
// stored bytes are exactly those it decoded, so a record that changed on
// disk behind the journal's back is decoded afresh.
//
// A cached proposal is shared by the records handed out; like every
// proposal, it is not to be modified.
type proposalCache struct {
	mu    sync.Mutex
	m     map[string]cachedProposal
	order []string // ids, oldest first
	bytes int
}

type cachedProposal struct {
	raw []byte
	p   proposal.Proposal
}

// The cache holds at most this many proposals, and this many bytes of
// them.
const (
	cacheEntries = 256
	cacheBytes   = 32 << 20
)

func (c *proposalCache) get(id string, raw []byte) (proposal.Proposal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || !bytes.Equal(e.raw, raw) {
		return proposal.Proposal{}, false
	}
	return e.p, true
}

func (c *proposalCache) put(id string, raw []byte, p proposal.Proposal) {
	if len(raw) > cacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedProposal{}
	}
	if old, ok := c.m[id]; ok {
		c.bytes -= len(old.raw)
	} else {
		c.order = append(c.order, id)
	}
	// bolt's bytes live only as long as the transaction: keep a copy.
	c.m[id] = cachedProposal{raw: bytes.Clone(raw), p: p}
	c.bytes += len(raw)
	for len(c.order) > 0 && (len(c.m) > cacheEntries || c.bytes > cacheBytes) {
		victim := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.m[victim]; ok {
			c.bytes -= len(e.raw)
			delete(c.m, victim)
		}
	}
}

// recordBody is Record without its methods; storedRecord reads a record
// with its proposal left as bytes.
type recordBody Record

type storedRecord struct {
	recordBody
	// Proposal is shallower than recordBody.Proposal, so encoding/json
	// decodes "proposal" here.
	Proposal json.RawMessage `json:"proposal"`
}

// decodeRecord decodes a stored record, its proposal through the cache.
func (c *proposalCache) decodeRecord(id string, v []byte) (Record, error) {
	var s storedRecord
	if err := json.Unmarshal(v, &s); err != nil {
		return Record{}, fmt.Errorf("record %s is unreadable: %w", id, err)
	}
	rec := Record(s.recordBody)
	if p, ok := c.get(id, s.Proposal); ok {
		rec.Proposal = p
		return rec, nil
	}
	if err := json.Unmarshal(s.Proposal, &rec.Proposal); err != nil {
		return Record{}, fmt.Errorf("record %s is unreadable: %w", id, err)
	}
	if rec.Proposal.ID == id {
		c.put(id, s.Proposal, rec.Proposal)
	}
	return rec, nil
}
