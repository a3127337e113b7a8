package cdpmsg

// Refusal is the one constructor of the message of every CDP error the
// guard writes to an agent: "cdpguard: <method> is refused: <why>", or
// "cdpguard: <why>" when the message has no method to name (unreadable
// JSON, no id). Agents and tests can rely on the prefix and on the method
// being named.
func Refusal(method, why string) string {
	if method == "" {
		return "cdpguard: " + why
	}
	return "cdpguard: " + method + " is refused: " + why
}
