"""optimization"""
