"""The database side of admission: read a cohort into the pure engine's snapshot (`inputs`,
`catalogue`), lock (`locks`), decide and persist (`decide`), and the periodic loop (`loop`)."""
