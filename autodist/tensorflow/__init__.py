"""Training on TensorFlow: the plan's strategy built and made current (at import and in ``fit``),
the model placed, the Keras workarounds applied, parameter-server serving, ``strategy="tune"``,
and ``fit``. TensorFlow's side of the backend seam (:mod:`autodist.core.fit_call`).
"""
