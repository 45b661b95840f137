"""The scored proxy path: reading a request, calling the upstream, delivering the answer,
and the model APIs (`surfaces`) it speaks.
"""
