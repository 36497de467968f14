"""Tutor-side pieces shared by the agent loop, SFT generation and evaluation: the tutor instruction,
the end-of-session marker, tutors over chat endpoints, and scripted tutors (test doubles)."""
