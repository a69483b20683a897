//! Examples of sandbox, one per user story (see `src/bin/`).
