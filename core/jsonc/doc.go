// Package jsonc edits JSON and JSONC (comments and trailing commas) files
// that belong to a person: an MCP client's configuration, Sluice's policy
// file. Edits are textual: a member or an array element is inserted,
// replaced or removed, and every other byte (comments, key order,
// formatting, line endings) stays as it was. A full decode-and-re-encode
// would reorder keys and drop comments, and some of these files
// (~/.claude.json) are large and owned by another program.
//
// Parse gives a tree with byte ranges; Doc is a document being edited;
// Plain turns JSONC into strict JSON for encoding/json.
package jsonc
