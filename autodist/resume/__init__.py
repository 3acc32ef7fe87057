"""Resume, the whole concept: a task's saved state (model, optimizer, callbacks, position), the
workers' agreement on the step to save, SIGTERM and the save after it (exit code 75), which
``fit`` calls save and where (the guard), and the resumed ``fit`` itself. The saves travelling in
Ray Train's checkpoints are Ray's side (:mod:`autodist.ray.reports`).
"""
