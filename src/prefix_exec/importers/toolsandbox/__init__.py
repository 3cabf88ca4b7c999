"""ToolSandbox run folders: the importer and the rows it reads."""
