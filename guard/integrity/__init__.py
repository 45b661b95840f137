"""Reading judged text as hostile input: the judged view (`guard.integrity.normalise`) and
tamper findings (`guard.integrity.tamper`)."""
