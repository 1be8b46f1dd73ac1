// Placeholder: owned by a later issue.
