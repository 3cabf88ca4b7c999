"""The generic environment for your own tools: a spec (tools list, JSON Schemas, hooks), its sessions, the side
files layered on it, and the evidence a log's recorded outcomes give."""
