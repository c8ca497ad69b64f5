// Package policy owns the optional agent policy file: which operations, refs
// and path prefixes each agent may propose, and the auto-approve rules for
// low-risk work. A policy file that is configured but missing or malformed is
// an error at load, never an empty policy.
//
// The file (policy.json):
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
//	  }
//	}
//
// An agent's own entry applies, else the "*" entry, else nothing restricts
// it. Denials happen before a card opens and are audited as policy_denied;
// auto-approvals are audited as such. Destructive proposals are never
// auto-approved, whatever a rule says.
package policy
