"""Gang identity and planning: which pods form a gang (`identity`, `ownership`), where the whole
gang goes (`making`, with `choose` pure), the plans kept until their members bind (`planner`,
`standing`), and the bind barrier that binds all members together or none (`barrier`)."""
