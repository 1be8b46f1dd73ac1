// Placeholder: portal kinds live here, one file per kind.
