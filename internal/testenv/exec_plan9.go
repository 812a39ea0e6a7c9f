package testenv

// ExecRefused reports false: Plan 9 has no ENOEXEC (see the other
// systems' version).
func ExecRefused(error) bool { return false }
