package resp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The ACL file (aclfile): users as ACL LIST writes them, one "user <name> <rules...>"
// line each, read at start and by ACL LOAD, written by ACL SAVE, as Redis 7.0 does.

// finish derives what checking needs from a user's rules, once they are all applied.
func (u *aclUser) finish() {
	u.free = u.allCmds && u.allKeys && u.allChannels && !slices.ContainsFunc(aclCommands().names, func(n string) bool { return !u.cmds[n] })
	u.scriptRules = encodeScriptRules(u)
}

// defaultUser is the default user as Redis creates it: on, no password, everything.
func defaultUser() *aclUser {
	u := &aclUser{name: "default", on: true, nopass: true, aclSelector: aclSelector{allCmds: true, cmds: map[string]bool{}, allKeys: true, allChannels: true}}
	for _, n := range aclCommands().names {
		u.cmds[n] = true
	}
	u.finish()
	return u
}

// readACLFile reads the users of an ACL file as Redis's ACLLoadFromFile does: every
// line is checked and every error reported (Redis's wording, path and line number), and
// the users are returned only if there was none. A file without the default user gets
// Redis's default one.
// allChannels is acl-pubsub-default's (newACLUser).
func readACLFile(path string, allChannels bool) (map[string]*aclUser, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		why := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			why = pe.Err.Error()
			if errors.Is(err, os.ErrNotExist) {
				why = "No such file or directory"
			}
		}
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %s", path, why)
	}
	users := map[string]*aclUser{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, n)
			continue
		}
		name := argv[1]
		if strings.ContainsAny(name, " \x00") {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", path, n, name)
			continue
		}
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		u := newACLUser(name, allChannels)
		ops, msg := mergeSelectors(argv[2:])
		if msg != "" {
			// (Redis 7.0.15 writes this, then crashes when rules came before the
			// selector)
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", path, n)
		}
		syntaxErr := false
		for _, op := range ops {
			op = strings.Trim(op, "\t\r\n")
			if op == "" {
				continue
			}
			switch why := u.apply(op, allChannels); {
			case why == "":
			case why == errACLUnknownName:
				// an unknown command is named: it tells nothing secret
				fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", path, n, op, why)
			case !syntaxErr:
				// other errors only once per line: they may come from an earlier one
				fmt.Fprintf(&errs, "%s:%d: %s. ", path, n, why)
				syntaxErr = true
			}
		}
		if errs.Len() == 0 {
			u.finish()
			users[name] = u
		}
	}
	if errs.Len() > 0 {
		return nil, errors.New(errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	}
	if users["default"] == nil {
		users["default"] = defaultUser()
	}
	return users, nil
}

// CheckACLFile reports the errors an ACL file would give at start, where Redis aborts
// on any (and acl-pubsub-default is its default, resetchannels).
func CheckACLFile(path string) error {
	_, err := readACLFile(path, false)
	return err
}

// loadFile replaces every user with those of the ACL file at path, or with none of them
// if it has an error. The default user keeps its place (its connections stay, under its
// new rules); every other user is replaced, and the connections that acted as one are
// to be closed, as Redis closes them: their refs are returned.
func (t *aclTable) loadFile(path string) ([]*aclRef, error) {
	t.mu.Lock()
	allChannels := t.allChannels
	t.mu.Unlock()
	users, err := readACLFile(path, allChannels)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []*aclRef
	for name, ref := range t.users {
		if name != "default" {
			ref.deleted.Store(true)
			gone = append(gone, ref)
		}
	}
	old := t.users["default"]
	t.users = map[string]*aclRef{"default": old}
	for name, u := range users {
		if name == "default" {
			old.u.Store(u)
			continue
		}
		ref := &aclRef{}
		ref.u.Store(u)
		t.users[name] = ref
	}
	return gone, nil
}

// saveFile writes every user's ACL LIST line to the file at path, replacing it whole
// (a temporary file renamed over it).
func (t *aclTable) saveFile(path string) error {
	var b strings.Builder
	for _, n := range t.names() {
		if ref := t.user(n); ref != nil {
			b.WriteString(ref.load().listLine())
			b.WriteByte('\n')
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil { // as Redis's ACL SAVE creates it
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
