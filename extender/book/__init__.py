"""The book of what gang plans and holds keep: the capacity each plan holds and the domain it
fences (`reservations`, read by the engine and the scores), the nodes held for gangs that wait
(`holds`), and the records of both in the API (`records`, `configmaps`)."""
