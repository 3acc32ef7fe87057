"""Run, on TensorFlow: the plan's strategy built and made current, the model placed, its input
made ready, and ``fit``; plus the parts both backends share (the fit call, its batch and its
callbacks: :mod:`autodist.run.backend`).
"""
