"""The harness the scenarios share: server processes (`procs`), the gateway launcher
(`gateways`), the load from wrk (`loadgen`), the aiohttp client (`client`), the report's
helpers (`report`), the machine and commit a report names (`machine`) and where results
go (`paths`).
"""
