"""Who is evicted for whom. Deciding (`contention`: which gangs wait, hold or preempt;
`victims`, pure: which pods, where; `freeing`, `units`, `priority`: what evicting frees and who
may take it) apart from acting (`evictor`, and `broken` for gangs that lost members); `verb`
filters kube-scheduler's own preemption for one pod."""
