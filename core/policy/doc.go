// Package policy owns the optional agent policy file: which operations, refs
// and path prefixes each agent may propose, and the auto-approve rules for
// low-risk work. A policy file that is configured but missing or malformed is
// an error at load, never an empty policy.
//
// The file (policy.json) is JSON; comments (// and /* */) and trailing
// commas are allowed, because it is the person's file and they may explain
// it:
//
//	{
//	  "version": 1,
//	  "agents": {
//	    "claude-code": {
//	      "ops": ["commit", "branch", "patch"],
//	      "refs": ["agent/**"],
//	      "paths": ["src", "docs"],
//	      "autoApprove": [
//	        {"name": "agent-commits", "ops": ["commit"], "refs": ["agent/**"]},
//	        {"name": "new-branches", "ops": ["branch"]}
//	      ]
//	    },
//	    "*": {"ops": ["branch", "commit", "patch", "merge"]}
//	  },
//	  // Made with "Approve and trust similar".
//	  "rules": [
//	    {"name": "claude-code-commit", "agent": "claude-code", "identity": "token",
//	     "repos": ["/home/me/src/webshop"], "ops": ["commit"],
//	     "refs": ["agent/*"], "paths": ["src"], "maxRisk": "low",
//	     "expiresAt": "2026-12-02T00:00:00Z", "createdAt": "2026-12-01T15:04:05Z",
//	     "fromProposal": "…"}
//	  ]
//	}
//
// An agent's own entry applies, else the "*" entry, else nothing restricts
// it. Denials happen before a card opens and are audited as policy_denied;
// auto-approvals are audited as such, naming the rule. Destructive proposals
// are never auto-approved, whatever a rule says, and no rule may set
// maxRisk "destructive".
//
// A rule matches when its repos (when set) hold every repository the
// proposal changes, its identity (when set) is the kind of identity the
// proposal's agent has ("session": a confined session Sluice started;
// "token": an HTTP token's or connector's name, which the sidecar
// authenticated; "declared": any program calling itself agent, which
// matches whatever vouches for the name), every op of the proposal (a
// plan's steps too) is in ops, its risk is at most maxRisk (default low), every branch it changes
// matches refs (when set; a proposal that does not name its branch does not
// match), every file it touches lies under paths (when set; a proposal
// whose files cannot be known in advance does not match), and expiresAt
// (when set) has not come. Rules inside an agent's entry are tried first,
// then the top-level rules whose agent is the proposal's (or "*").
//
// The top-level "rules" list, and the rule keys agent, paths, expiresAt,
// createdAt, fromProposal, repos and identity, came after the first files
// of version 1. The version stays 1: every file an earlier Sluice read
// reads the same here, and a rule without repos or identity approves in
// every repository whatever vouches for its agent's name, as it did. A
// rule made from a card (AddRule with fromProposal) always names the
// card's repository and its agent's kind of identity.
//
// File edits a policy file in place: AddRule and RemoveRule change only
// the rules list (or, for RemoveRule, the agent's autoApprove list) through
// package jsonc, so the person's comments and formatting stay; Save writes
// through a temporary file, fsync and rename, keeps the file's permissions,
// follows a symlink to its target, and refuses (ErrChanged) when the file
// on disk is no longer the one read.
package policy
