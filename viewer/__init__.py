"""The oclla teaching viewer: watch each step of a factorization and where the time goes.

Run ``oclla-viewer`` (or ``python -m oclla.viewer``); ``oclla-viewer --help`` lists
the headless options.  The viewer reads only the public trace
(:func:`oclla.record`, :func:`oclla.load_recording`), so a saved recording
replays on a machine with no OpenCL device.
"""
