"""ITU-T Y.1564 service activation (EtherSAM): the services a link
carries, each with its bandwidth profile (MEF 10.3: CIR, EIR, CBS, EBS,
colour mode) and acceptance criteria (SAC: FLR, FTD, FDV, AVAIL); the
service configuration test's steps (Y.1564 8.1) and their rules; the
service performance test's per-second bins and availability (Y.1564 8.2,
MEF 10.3). Pure, no I/O beyond reading the services file: the procedures
run the steps, the results keep them, the report shows them.

Rates are information rates at layer 2: a frame counts from its
destination address through its FCS (MEF 10.3's service frame), as
CIR and EIR do. docs/y1564.md says what each step checks.
"""
