from gpudra.cli import main

main()
