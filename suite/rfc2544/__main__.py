from rfc2544.cli import main

main()
